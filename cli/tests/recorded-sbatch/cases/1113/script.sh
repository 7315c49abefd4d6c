#!/bin/bash
#PBS -l pmem=1gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
